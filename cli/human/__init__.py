"""What only a person may answer: asking at a terminal."""
