"""What the operator measures and limits beyond one request: tenant limits counted in the store, metrics, and the admin routes that read them."""
