"""`evalbeam view`: a local, read-only web viewer over an output folder's runs
(data.py: the runs through their completion markers, queried with DuckDB;
pages.py: the HTML; server.py: the HTTP server on 127.0.0.1)."""
