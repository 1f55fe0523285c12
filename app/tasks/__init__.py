"""Tasks: creation, listing, access, a task's result and a collection's progress."""
