"""The training screen's panels, one per question a student asks of a merge."""
