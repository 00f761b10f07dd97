"""The panels of Unigram's training screen."""
