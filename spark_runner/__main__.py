"""``python -m spark_runner`` runs the kassign CLI."""

from spark_runner.cli.app import main

main()
