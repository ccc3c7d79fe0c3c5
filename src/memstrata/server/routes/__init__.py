"""The HTTP API's routes, one module per area; every path is under ``/v1``."""
