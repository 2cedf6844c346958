"""The assistant `turnkeeper serve` runs in workload G: no tools, the fake's answer alone.

turnkeeper serve bench.live_app:assistant --provider anthropic
"""

from __future__ import annotations

from turnkeeper import Assistant

assistant = Assistant(name="Live bench", max_tokens=4096, prompt_cache=False)
