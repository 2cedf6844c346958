"""Descriptions read from docstrings, in the two styles tools are written in."""

from __future__ import annotations

from turnkeeper.tools.docstrings import Docstring, parse


def test_google_style() -> None:
    doc = parse(
        """Find flights.

        Cheapest first.

        Args:
            origin (str): the airport to leave from,
                as an IATA code
            *passengers: ignored here
            date: the day, ISO 8601

        Returns:
            the flights
        Raises:
            ValueError: never
        """
    )
    assert doc == Docstring(
        "Find flights.\n\nCheapest first.",
        {
            "origin": "the airport to leave from, as an IATA code",
            "passengers": "ignored here",
            "date": "the day, ISO 8601",
        },
    )


def test_sphinx_style() -> None:
    doc = parse(
        """Find flights.

        :param origin: the airport
            to leave from
        :type origin: str
        :param str date: the day
        :returns: the flights
        """
    )
    assert doc == Docstring(
        "Find flights.", {"origin": "the airport to leave from", "date": "the day"}
    )


def test_no_docstring_and_no_sections() -> None:
    assert parse(None) == Docstring()
    assert parse("Just a line.\nAnd another: with a colon.") == Docstring(
        "Just a line.\nAnd another: with a colon."
    )
