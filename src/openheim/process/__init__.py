"""Process plumbing: starting children, their environment, logging and start-up speed."""
