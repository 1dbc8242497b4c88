"""The budget and who it protects: the ledger, units of protection, datasets known by their people."""
