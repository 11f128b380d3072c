"""Units a quantity is said in: "two years" and "24 months" are one quantity,
so a figure followed by a unit word also reads in the unit's base unit."""
from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

from transforms.score.facts.anchors import decimal_text

# Units a quantity is said in, -> (dimension, size in its base unit): "two years"
# states the "24 months" of a context, "2,700 metres" its "2.7 km", "1,500 MB"
# its "1.5 GB". A figure with a unit gets its base-unit reading as a key too.
_MEASURES: dict[str, tuple[str, str]] = {
    **dict.fromkeys(("year", "years", "yr", "yrs", "jahr", "jahre", "jahren", "an", "ans",
                     "année", "années", "año", "años", "anno", "anni", "ano", "anos"), ("month", "12")),
    **dict.fromkeys(("month", "months", "monat", "monate", "monaten", "mois", "mes", "meses",
                     "mese", "mesi"), ("month", "1")),
    **dict.fromkeys(("week", "weeks", "wk", "wks", "woche", "wochen", "semaine", "semaines",
                     "semana", "semanas", "settimana", "settimane"), ("day", "7")),
    **dict.fromkeys(("day", "days", "tag", "tage", "tagen", "jour", "jours", "día", "días",
                     "giorno", "giorni", "dia", "dias"), ("day", "1")),
    **dict.fromkeys(("hour", "hours", "hr", "hrs", "stunde", "stunden", "heure", "heures",
                     "hora", "horas", "ora", "ore"), ("second", "3600")),
    **dict.fromkeys(("minute", "minutes", "min", "mins", "minuten", "minuto", "minutos",
                     "minuti"), ("second", "60")),
    **dict.fromkeys(("second", "seconds", "sec", "secs", "sekunden", "secondes", "segundos",
                     "secondi"), ("second", "1")),
    **dict.fromkeys(("km", "kilometre", "kilometres", "kilometer", "kilometers", "kilómetros",
                     "chilometri"), ("metre", "1000")),
    **dict.fromkeys(("m", "metre", "metres", "meter", "meters", "metros", "metri", "mètres"),
                    ("metre", "1")),
    **dict.fromkeys(("cm", "centimetre", "centimetres", "centimeter", "centimeters"), ("metre", "0.01")),
    **dict.fromkeys(("mm", "millimetre", "millimetres", "millimeter", "millimeters"), ("metre", "0.001")),
    **dict.fromkeys(("kg", "kilogram", "kilograms", "kilogramme", "kilogrammes", "kilo", "kilos"),
                    ("gram", "1000")),
    **dict.fromkeys(("g", "gram", "grams", "gramme", "grammes", "gramm"), ("gram", "1")),
    **dict.fromkeys(("mg", "milligram", "milligrams", "milligramme", "milligrammes"), ("gram", "0.001")),
    **dict.fromkeys(("tb", "terabyte", "terabytes"), ("byte", "1000000000000")),
    **dict.fromkeys(("gb", "gigabyte", "gigabytes"), ("byte", "1000000000")),
    **dict.fromkeys(("mb", "megabyte", "megabytes"), ("byte", "1000000")),
    **dict.fromkeys(("kb", "kilobyte", "kilobytes"), ("byte", "1000")),
    **dict.fromkeys(("l", "litre", "litres", "liter", "liters", "litros", "litri"), ("litre", "1")),
    **dict.fromkeys(("ml", "millilitre", "millilitres", "milliliter", "milliliters"), ("litre", "0.001")),
}
_UNIT_AFTER = re.compile(r"[ \u00a0-]?([^\W\d_]+)")


def measure_keys(text: str, end: int, norm: str) -> tuple[str, ...]:
    """The base-unit reading of a figure followed by a unit word ("month:24")."""
    m = _UNIT_AFTER.match(text, end)
    if m is None:
        return ()
    unit = _MEASURES.get(m.group(1).lower())
    if unit is None:
        return ()
    dimension, size = unit
    try:
        return (f"{dimension}:{decimal_text(Decimal(norm) * Decimal(size))}",)
    except InvalidOperation:
        return ()
