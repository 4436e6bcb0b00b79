"""What both relays (:class:`~.peers.LocalRelay`, :class:`~.relay.PgCancelRelay`) hold in common.

A server route waits on a relay while it asks the other processes; the limits on
that wait are the server's, not the transport's, so they live once, here.
"""

from __future__ import annotations

__all__ = ["Relay"]


class Relay:
    """A relay's limits on asks, and the check a ``forward`` makes before it asks."""

    #: at most this many asks wait at once in one process; more are refused (the route answers 503)
    max_pending = 256
    #: how long an ask waits for the other processes' answers (it ends sooner once all have answered)
    wait = 2.0

    def _admit(self, waiting: int) -> None:
        """Refuse a new ask while ``waiting`` asks (this process's) already wait.

        Raises:
            OverflowError: ``max_pending`` asks are waiting already.
        """
        if waiting >= self.max_pending:
            raise OverflowError("too many cancels are waiting for other server processes")
