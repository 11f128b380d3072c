"""Stage `read`: ReadCases (Parquet; more formats to come), input sharding, duplicate case ids."""
