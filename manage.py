#!/usr/bin/env python
"""Django's command-line utility for the ContractEval audit workspace."""

import os
import sys


def main() -> None:
    from contracteval_site.startup import pause_collector

    pause_collector()  # resumed when the apps are ready; see contracteval_site/startup.py
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "contracteval_site.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
