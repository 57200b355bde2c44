"""Scheduling tasks in batches by their dependencies (the reference pytato's
helpers of :mod:`pytato.distributed.partition`, which its tests import).

A task's *level* is 0 if it needs no task, else one more than the largest
level of the tasks it needs; the batch of level ``k`` holds the tasks of
that level, which need only tasks of earlier batches and not each other.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence, Set
from typing import TypeVar

from pytato.diagnostic import DependencyCycleError, InvalidKeyError


TaskT = TypeVar("TaskT", bound=Hashable)


def _calculate_dependency_levels(
        tasks_to_dependencies: Mapping[TaskT, Set[TaskT]]
        ) -> tuple[dict[TaskT, int], int]:
    """The level of each task, and the number of tasks the search entered
    (each once: linear in the number of tasks and dependencies). Iterative,
    so that long chains of tasks do not reach Python's recursion limit.

    :raises pytato.diagnostic.DependencyCycleError: if tasks depend on each
        other in a cycle.
    :raises pytato.diagnostic.InvalidKeyError: if a dependency is not a key
        of *tasks_to_dependencies*.
    """
    level: dict[TaskT, int] = {}
    on_path: set[TaskT] = set()
    nvisits = 0
    for root in tasks_to_dependencies:
        if root in level:
            continue
        # (task, iterator over its dependencies) of the path being searched
        nvisits += 1
        on_path.add(root)
        stack = [(root, iter(_dependencies(tasks_to_dependencies, root)))]
        while stack:
            task, deps = stack[-1]
            for dep in deps:
                if dep in level:
                    continue
                if dep in on_path:
                    raise DependencyCycleError(
                        dep, f"the tasks depend on each other in a cycle "
                        f"through {dep!r}")
                nvisits += 1
                on_path.add(dep)
                stack.append(
                    (dep, iter(_dependencies(tasks_to_dependencies, dep))))
                break
            else:
                stack.pop()
                on_path.discard(task)
                level[task] = 1 + max(
                    (level[d] for d in tasks_to_dependencies[task]),
                    default=-1)
    return level, nvisits


def _dependencies(tasks_to_dependencies: Mapping[TaskT, Set[TaskT]],
                  task: TaskT) -> Set[TaskT]:
    try:
        return tasks_to_dependencies[task]
    except KeyError:
        raise InvalidKeyError(
            f"task {task!r} is needed but has no entry in "
            "'tasks_to_dependencies'") from None


def _schedule_task_batches_counted(
        tasks_to_dependencies: Mapping[TaskT, Set[TaskT]]
        ) -> tuple[Sequence[set[TaskT]], int]:
    """The batches of the tasks (see the module docstring), as a list of
    sets, the ``k``-th holding the tasks of level ``k``; and the number of
    steps the scheduling took (the tasks entered by the search plus the
    tasks placed in batches: twice the number of tasks, for tests of its
    linear complexity).

    :arg tasks_to_dependencies: maps each task to the set of the tasks it
        needs (each of which must be a key too).
    """
    level, nvisits = _calculate_dependency_levels(tasks_to_dependencies)
    batches: list[set[TaskT]] = [
        set() for _ in range(1 + max(level.values(), default=-1))]
    for task, lvl in level.items():
        batches[lvl].add(task)
    return batches, nvisits + len(level)


def _schedule_task_batches(
        tasks_to_dependencies: Mapping[TaskT, Set[TaskT]]
        ) -> Sequence[set[TaskT]]:
    """The batches of :func:`_schedule_task_batches_counted`, without the
    count."""
    return _schedule_task_batches_counted(tasks_to_dependencies)[0]
