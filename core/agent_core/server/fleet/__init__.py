"""What lets several processes serve as one store's requests: cancels and approval answers relayed to the process that runs the request."""
