"""A program that starts and never speaks MCP: it reads stdin and never answers."""
import sys

for _ in sys.stdin:
    pass
