"""``python -m memstrata``: the same command line as the ``memstrata`` console script."""

from .cli.app import main

if __name__ == "__main__":
    main()
