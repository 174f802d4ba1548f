"""Runtime: configuration, the embedded PostgreSQL server, database roles, `grove serve`,
the command line, the stdio bridge and the file broker.
"""
