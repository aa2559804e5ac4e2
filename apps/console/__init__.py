"""The run console's and API docs' pages and scripts (package data, served by run_console)."""
