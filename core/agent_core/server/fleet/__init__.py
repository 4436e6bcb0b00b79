"""What lets several processes serve as one: the workers on one socket, and cancels and approvals relayed to the process that runs a request."""
