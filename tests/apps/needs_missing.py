"""A module that imports a package that is not installed."""

import turnkeeper_no_such_package  # type: ignore[import-not-found]  # noqa: F401
