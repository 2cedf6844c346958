"""Assistants the browser tests serve (`turnkeeper serve shop:assistant --app-dir` here)."""
