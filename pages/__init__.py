"""The Memory Console's server side: routes and view models over the memory service."""
