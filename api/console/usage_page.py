"""The console's usage page: the tenant's tokens and cost per day and per model, as two bar charts drawn on the
server (SVG, stacked by model, no script and no library) and the table they are drawn from.

The figures are the tenant's daily usage (store/tenancy/usage.py): every model call of every dialect, priced
at its model's price when it was made (DA_MODELS `pricing`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request
from starlette.responses import Response

from api.console import guard as guard
from api.console.routes import page
from api.services import ServicesDep
from store.tenancy.usage import DailyUsage, UsageStore

router = APIRouter(prefix="/console", include_in_schema=False)

PALETTE = ("#2456c8", "#e07b00", "#067647", "#b42318", "#7a3fc2", "#0e7490", "#a16207", "#475467")
"""One colour per model, in the order models first appear; more models than colours reuse them."""
WIDTH, HEIGHT, LEFT, BOTTOM, TOP = 900, 220, 100, 24, 10


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    colour: str
    title: str


@dataclass(frozen=True)
class Chart:
    """A stacked bar chart, laid out here so the template only places what it is given."""

    label: str
    bars: list[Bar]
    peak: str
    """The value of the top of the axis, as shown."""
    ticks: list[tuple[float, str]]
    """Day labels along the bottom: x and text."""


def _chart(label: str, days: list[date], usage: list[DailyUsage], value: str, unit: str) -> Chart:
    models = sorted({row.model for row in usage}, key=[row.model for row in usage].index)
    colour = {model: PALETTE[index % len(PALETTE)] for index, model in enumerate(models)}
    amount = {(row.day, row.model): _amount(row, value) for row in usage}
    totals = [sum(amount.get((day, model), 0.0) for model in models) for day in days]
    peak = max(totals, default=0.0) or 1.0
    slot = (WIDTH - LEFT) / len(days)
    plot = HEIGHT - BOTTOM - TOP
    bars: list[Bar] = []
    for index, day in enumerate(days):
        base = float(HEIGHT - BOTTOM)
        for model in models:
            shown = amount.get((day, model), 0.0)
            if shown <= 0:
                continue
            height = plot * shown / peak
            base -= height
            title = f"{day.isoformat()} · {model}: {_figure(shown)} {unit}"
            bars.append(Bar(LEFT + index * slot + slot * 0.15, base, slot * 0.7, height, colour[model], title))
    every = max(1, len(days) // 8)
    ticks = [(LEFT + (i + 0.5) * slot, day.strftime("%b %d")) for i, day in enumerate(days) if i % every == 0]
    return Chart(label, bars, f"{_figure(peak)} {unit}", ticks)


def _amount(row: DailyUsage, value: str) -> float:
    return float(row.input_tokens + row.output_tokens) if value == "tokens" else row.cost_cents / 100


def _figure(amount: float) -> str:
    return f"{amount:,.0f}" if amount >= 100 or amount == int(amount) else f"{amount:,.4f}"


@router.get("/usage")
async def usage(request: Request, services: ServicesDep, days: Annotated[Literal[7, 30, 90], Query()] = 30) -> Response:
    principal = guard.signed_in(request)
    today = datetime.now(UTC).date()
    shown_days = [today - timedelta(days=back) for back in range(days - 1, -1, -1)]
    rows = await UsageStore(services.store.database).daily(principal.tenant, shown_days[0], today)
    models = sorted({row.model for row in rows}, key=[row.model for row in rows].index)
    return page(
        request,
        "usage.html",
        days=days,
        rows=rows,
        legend=[(model, PALETTE[index % len(PALETTE)]) for index, model in enumerate(models)],
        charts=[
            _chart("Tokens per day", shown_days, rows, "tokens", "tokens"),
            _chart("Cost per day", shown_days, rows, "cost", "USD"),
        ],
        total_tokens=sum(row.input_tokens + row.output_tokens for row in rows),
        total_usd=sum(row.cost_cents for row in rows) / 100,
        size=(WIDTH, HEIGHT, LEFT, BOTTOM, TOP),
        tenant=principal.tenant,
        signed_in=bool(services.settings.key_entries()),
    )
