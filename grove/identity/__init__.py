"""Identity: the owner account, connections (keys and OAuth apps), approval and grants.
"""
