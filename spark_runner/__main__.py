"""``python -m spark_runner`` runs the kassign CLI."""

from spark_runner.cli.entry import main

main()
