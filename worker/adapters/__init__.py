"""I/O adapters: the database repository, the object stores, the queue sinks, metrics collection."""
