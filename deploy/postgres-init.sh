#!/bin/sh
# Run once by the postgres image on an empty data volume (compose.yaml).
# Two roles (SPEC §5): grove_owner owns the schema and migrates; grove is the runtime
# role that row-level security applies to. pgvector needs a superuser once.
set -e
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
    -v owner_password="$GROVE_DB_OWNER_PASSWORD" -v runtime_password="$GROVE_DB_PASSWORD" <<'SQL'
CREATE ROLE grove_owner LOGIN PASSWORD :'owner_password';
CREATE ROLE grove LOGIN PASSWORD :'runtime_password' NOSUPERUSER NOBYPASSRLS;
CREATE DATABASE grove OWNER grove_owner;
SQL
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname grove \
    -c "CREATE EXTENSION IF NOT EXISTS vector"
