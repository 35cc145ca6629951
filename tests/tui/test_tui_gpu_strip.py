"""The dashboard's GPU cells: vLLM GPUs marked, foreign memory flagged, lost GPUs said."""

from __future__ import annotations

from recorded_sources import recorded_gpus

from headroom.tui.widgets.gpu_strip import gpu_cell


def test_cells_mark_vllm_and_foreign_memory():
    gpus = recorded_gpus().gpus
    assert gpu_cell(gpus[0]).startswith("[$accent]▶[/]")
    assert gpu_cell(gpus[2]).startswith("[$warning]![/]")
    assert gpu_cell(gpus[3]).startswith(" ")
    assert "72.4/80G" in gpu_cell(gpus[0]) and "611 W" in gpu_cell(gpus[0])


def test_lost_gpu_says_so():
    import dataclasses

    lost = dataclasses.replace(recorded_gpus().gpus[1], lost=True)
    assert "lost" in gpu_cell(lost)


def test_missing_readings_are_na():
    import dataclasses

    blank = dataclasses.replace(
        recorded_gpus().gpus[3], util_gpu=None, memory_used=None, power_w=None, processes=()
    )
    cell = gpu_cell(blank)
    assert "N/A" in cell and "mem N/A" in cell


async def test_dashboard_shows_one_row_per_engine_when_data_parallel(recorded_app):
    import dataclasses

    import recorded_sources as recorded
    from tui_helpers import screen_text, settle

    base = recorded.recorded_metrics()
    engines = tuple(
        dataclasses.replace(base.total, engine=str(i), kv_cache_usage=usage)
        for i, usage in enumerate((0.95, 0.41))
    )
    app = recorded_app()
    app.sources.scrape_metrics = lambda: _value(dataclasses.replace(base, engines=engines))
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(app, pilot)
        text = screen_text(app)
        assert "engine 0" in text and "95%" in text
        assert "engine 1" in text and "41%" in text


async def _value(value):
    return value
