"""Example servers shipped with mcpwire."""
