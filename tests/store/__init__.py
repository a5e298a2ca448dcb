"""The store on SQLite and PostgreSQL: repositories, migrations, the event hub, the whole stack on PostgreSQL."""
