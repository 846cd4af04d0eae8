"""A staging pipe with small chunks for one test, so modest tensors run it whole."""

from gpu_tensor.transfer import staging


def small_staging_chunks(monkeypatch, chunk_bytes: int, min_chunk_bytes: int):
    """Installs a staging config of 3 workers and 4 slots with these chunk sizes until the
    test ends (monkeypatch restores the default), and returns it."""
    cfg = staging.StagingConfig()
    cfg.chunk_bytes, cfg.min_chunk_bytes, cfg.workers, cfg.depth = (
        chunk_bytes,
        min_chunk_bytes,
        3,
        4,
    )
    monkeypatch.setattr(staging, "config", cfg)
    return cfg
