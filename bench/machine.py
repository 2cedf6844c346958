"""What a run ran on: CPU, cores, load, Python and package versions, date."""

from __future__ import annotations

import datetime
import os
import platform
from importlib import metadata
from pathlib import Path

PACKAGES = [
    "turnkeeper",
    "pydantic-ai-slim",
    "openai-agents",
    "openai",
    "langgraph",
    "langgraph-prebuilt",
    "langchain-core",
    "anthropic",
    "httpx2",
    "pydantic",
]


def cpu_model() -> str:
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return platform.processor() or "unknown"
    names = [line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")]
    return names[0] if names else platform.processor() or "unknown"


def version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def describe(started: datetime.datetime, seconds: float, load_before: str) -> str:
    rows = [
        f"- date: {started:%Y-%m-%d %H:%M} UTC; the run took {seconds / 60:.1f} min",
        f"- CPU: {cpu_model()}, {os.cpu_count()} cores (shared with other work during the run)",
        f"- load average (1, 5, 15 min): {load_before} before, {load()} after",
        f"- {platform.platform()}",
        f"- Python {platform.python_version()} ({platform.python_implementation()})",
        "- packages: " + ", ".join(f"{p} {version(p)}" for p in PACKAGES),
    ]
    return "\n".join(rows)
