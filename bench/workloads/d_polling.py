"""D. Polling `GET /api/turns/{id}?after=N` with nothing new, 200 concurrent clients.

SLOT: needs the HTTP API (issue 5). When it lands, serve the API and a bare
Starlette endpoint that answers 204 under the same server settings, drive
both with 200 concurrent clients in alternating slices, and report requests
per second and their ratio.
"""

from __future__ import annotations

from ..report import Context, Headline, Section

TITLE = "D. Idle polling"
WHY = "pending: the HTTP API is not on this branch"


def run(ctx: Context) -> Section:
    head = Headline("D", "requests / s ÷ bare Starlette", "≥ 60%", "", WHY)
    return Section(TITLE, WHY + ".", [head])
