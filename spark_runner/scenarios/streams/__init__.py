"""Kafka Streams rebalance scenarios: clients, tasks, lags and events, generated from (parameters, seed).

The Streams counterpart of :mod:`spark_runner.scenarios.consumer`.  A
:class:`StreamsScenario` is an initial ``protocol: streams``
:class:`~solver.model.Instance`, a tuple of concrete :class:`StreamsEvent`
objects and a :class:`LagModel` (changelog sizes and rates).  Every random
choice is made once by :func:`generate_streams` from
``numpy.random.Generator(PCG64(seed))``; :func:`apply_streams_event` is pure::

    next_instance = apply_streams_event(instance, event, assignment, scenario.lag_model)

Carry-over (what a client reports at step ``n + 1`` after the assignor's step ``n`` output)
----------------------------------------------------------------------------------------------
* a task the assignor gave the client as an **active** is a previous active
  (caught up, Kafka's ``LATEST_OFFSET``);
* a task given as a **standby or warm-up** is a previous standby whose lag
  shrinks by ``restore_rate`` (from its lag at step ``n``; from the task's
  full changelog size when the client had no state), never below 0;
* a task the client has state for but was not given keeps the state and
  falls behind by ``lag_growth`` (a former active starts from 0), capped at
  the changelog size;
* no state stays no state.  Stateless tasks never have lags.

Events (what the next rebalance sees)
-------------------------------------
``join`` / ``scale-out``
    one / ``scale_k`` new clients (fresh process id, threads drawn, no state),
    appended to the client list.
``leave`` / ``scale-in``
    one / ``scale_k`` clients leave with their state.
``crash``
    a client's process dies with its state directory: it comes back under
    the same name but a new process id (Kafka keeps the process id in the
    state directory since KAFKA-10716, so losing the state loses the id) and
    no state.
``rolling-restart``
    a block of consecutive steps, one per client in list order: the client
    restarts with the same process id and its state on disk, rejoining at the
    end of the list.  Nothing runs on it at the rebalance, so (as Kafka's
    task offset sums report it) its former actives become standbys with lag
    ``lag_growth`` and its standbys fall behind by ``lag_growth``.
``lag-drift``
    time passes without a membership change (a probing rebalance): the usual
    restoration progress, and every stale lag (state without a replica) is
    multiplied by a per-task lognormal factor (sigma ``drift``).
``partition-expansion``
    a sub-topology's source topic gains partitions: new tasks with no state
    anywhere (stateful ones get a changelog size).

KIP-1071 scenarios (``kip1071: true``: the Streams rebalance protocol)
----------------------------------------------------------------------
Every client lists its group **members**, one per stream thread, with member
ids as a Streams client makes them (22 base64url characters).  A member's
previous target is what the assignor gave *that member* (assignors that answer
per member: ``streams-server-sticky``, and the optimum, which shares each
process's tasks among its members); an assignor that answers per client has its
client's tasks dealt to the members round-robin in task order.  Every member
reports the offset sums of its process's state (changelog size minus lag) for
the tasks it does not run as an active, as Kafka 4.4 reads them; members have
reconciled their targets (no ``current_*``).  Process-level events keep their
meaning; a crashed or restarted process's members rejoin under new ids and
without targets (a restarted one still reports its state).  Three more events:

``member-join``
    a process gains a member (a thread), without targets;
``member-leave``
    a member of a process with two or more leaves; the tasks it ran stay on disk;
``member-restart``
    a member rejoins under a new id without targets; its process keeps the state.

The code, by concern: :mod:`~spark_runner.scenarios.streams.params` (parameters and their checks),
:mod:`~spark_runner.scenarios.streams.events` (the lag model, events and :func:`apply_streams_event`),
:mod:`~spark_runner.scenarios.streams.generation` (the initial application and the drawn events).
"""

from spark_runner.scenarios.streams.events import (
    LagModel,
    NewClient,
    StreamsEvent,
    TaskRacks,
    apply_streams_event,
    strip_state,
)
from spark_runner.scenarios.streams.generation import StreamsScenario, generate_streams
from spark_runner.scenarios.streams.params import (
    INITIAL_STATES,
    MEMBER_EVENT_KINDS,
    PROTOCOL,
    STREAMS_EVENT_KINDS,
    STREAMS_FIELD_CHECKS,
    AnyParams,
    StreamsScenarioParams,
    params_from_dict,
    protocol_of,
)

__all__ = [
    "INITIAL_STATES",
    "MEMBER_EVENT_KINDS",
    "PROTOCOL",
    "STREAMS_EVENT_KINDS",
    "STREAMS_FIELD_CHECKS",
    "AnyParams",
    "LagModel",
    "NewClient",
    "StreamsEvent",
    "StreamsScenario",
    "StreamsScenarioParams",
    "TaskRacks",
    "apply_streams_event",
    "generate_streams",
    "params_from_dict",
    "protocol_of",
    "strip_state",
]
