"""The entry caches of a factory share one budget (managedLedgerCacheSizeMB, broker-wide)."""
from minipulsar.storage import ManagedLedgerConfig
from minipulsar.storage.entry_cache import EVICTION_WATERMARK, CacheBudget, EntryCache


def old_and_new(old_entries: int, new_entries: int) -> tuple[CacheBudget, EntryCache, EntryCache]:
    """A 1 MiB budget whose cache `old` got old_entries of 1,000 B, then `new` new_entries."""
    budget = CacheBudget(ManagedLedgerConfig(entry_cache_size_mb=1))
    old, new = EntryCache(budget), EntryCache(budget)
    for entry_id in range(old_entries):
        old.add(0, entry_id, b"o" * 1000)
    for entry_id in range(new_entries):
        new.add(0, entry_id, b"n" * 1000)
    return budget, old, new


def test_many_caches_stay_within_one_budget():
    budget = CacheBudget(ManagedLedgerConfig(entry_cache_size_mb=1))
    caches = [EntryCache(budget) for _ in range(50)]
    for entry_id in range(200):
        for cache in caches:
            cache.add(0, entry_id, b"x" * 1000)
    assert budget.used <= budget.limit
    assert budget.used == sum(c._bytes for c in caches)
    assert caches[-1].get(0, 199, 199) == [b"x" * 1000], "the newest entries stay cached"


def test_least_recently_appended_cache_gives_up_entries_first():
    budget, idle, busy = old_and_new(600, 800)
    assert idle.get(0, 0, 0) is None and busy.get(0, 799, 799) is not None
    assert budget.used <= budget.limit


def test_forgotten_cache_returns_its_bytes():
    budget = CacheBudget(ManagedLedgerConfig(entry_cache_size_mb=1))
    cache = EntryCache(budget)
    for entry_id in range(10):
        cache.add(3, entry_id, b"x" * 100)
    budget.forget(cache)
    assert budget.used == 0 and cache.get(3, 0, 0) is None


def test_zero_budget_caches_nothing():
    budget = CacheBudget(ManagedLedgerConfig(entry_cache_size_mb=0))
    cache = EntryCache(budget)
    cache.add(0, 0, b"x")
    assert cache.get(0, 0, 0) is None and budget.used == 0


def test_an_eviction_brings_the_total_down_to_the_watermark():
    """Pulsar's managedLedgerCacheEvictionWatermark (0.9): one eviction frees room for many appends."""
    budget, old, new = old_and_new(1000, 48)
    assert budget.used == 1_048_000, "not evicted yet: within 1 MiB"
    new.add(0, 48, b"n" * 1000)
    assert budget.used <= budget.limit * EVICTION_WATERMARK
    assert new.get(0, 0, 48) is not None, "the cache appended to last keeps its entries"
    assert budget.used == old._bytes + new._bytes


def test_a_newer_cache_gives_up_nothing_while_an_older_one_has_entries():
    budget, old, new = old_and_new(150, 898)
    assert budget.used == 1_048_000, "within 1 MiB until the next append"
    new.add(0, 898, b"n" * 1000)
    assert budget.used <= budget.limit * EVICTION_WATERMARK
    assert old.get(0, 0, 0) is None, "the older cache gave up its oldest entries"
    assert new.get(0, 0, 898) is not None and new._bytes == 899_000, "the newer one kept all of its"
