"""Assembly of evalbeam: config loading, the CLI and the pipeline graph."""
import logging


class _DropBeamImportNoise(logging.Filter):
    """Beam warns on import that optional GCP client libraries are absent;
    evalbeam does not use them, so the line only confuses users."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "apitools not found" not in record.getMessage()


logging.getLogger().addFilter(_DropBeamImportNoise())
