"""What the test files share: processes, interpreters, targets, and the
checks of dumps, cores, task graphs and profiles.  See tests/README.md."""
