"""Interfaces: how requests reach the services — REST assembly, the MCP transport, web
middleware, request limits and markdown rendering.
"""
