"""LoCoMo: loader, metrics, baselines and the runner that measures memstrata against them."""
