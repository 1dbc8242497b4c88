"""Table input: reading files, the owner's declarations, bounds and categories, private or public."""
