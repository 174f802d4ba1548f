"""Grove: self-hosted memory and notes for people and their AI agents."""
