#!/usr/bin/env python
"""Django's manage.py for Grove; identical to the `grove` command."""

from grove.runtime.cli import main

if __name__ == "__main__":
    main()
