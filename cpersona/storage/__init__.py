"""SQLite storage: connections, migrations, row repositories, the task queue."""
