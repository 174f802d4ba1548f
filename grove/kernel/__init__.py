"""The kernel: who is asking, whose rows, what may fail and how, and the background queue.

Imports no feature app and nothing above it.
"""
