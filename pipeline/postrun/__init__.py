"""Post-run commands: they read a finished run's published tables (calibrate,
compare, status) and never touch the pipeline that wrote them."""
