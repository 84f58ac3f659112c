//! The pool a resident runtime's sandboxes are made from. Mapping a fresh
//! linear memory for each call and unmapping it after (with the cross-core TLB
//! flush that costs) was a third of a served event's time; a pool reserves the
//! address space once and resets a slot's pages when it is used again.
//!
//! An event runs its guardrails one after another, each in a sandbox closed
//! before the next opens, so the sandboxes alive at once are at most the events
//! judged at once. Every per-instance size is far above what a guardrail needs,
//! so that nothing the one-shot hook instantiates fails here for want of room.

use wasmtime::{InstanceAllocationStrategy, PoolingAllocationConfig};

/// The most sandboxes open at once: the server judges at most half as many
/// events at once, so a slot is always free.
pub const SANDBOXES_AT_ONCE: u32 = 128;

/// Core instances, memories and tables one component may hold, in the totals.
const CORE_INSTANCES_EACH: u32 = 16;
const MEMORIES_EACH: u32 = 4;
const TABLES_EACH: u32 = 8;

pub fn sized() -> InstanceAllocationStrategy {
    let mut pool = PoolingAllocationConfig::default();
    pool.total_component_instances(SANDBOXES_AT_ONCE)
        .total_core_instances(SANDBOXES_AT_ONCE * CORE_INSTANCES_EACH)
        .total_memories(SANDBOXES_AT_ONCE * MEMORIES_EACH)
        .total_tables(SANDBOXES_AT_ONCE * TABLES_EACH)
        .total_stacks(SANDBOXES_AT_ONCE)
        // What a guest's memory may grow to is the guardrail's own limit, which
        // the store's limiter keeps; the pool only must not be smaller.
        .max_memory_size(4 << 30)
        .max_component_instance_size(16 << 20)
        .max_core_instance_size(16 << 20)
        .table_elements(100_000);
    InstanceAllocationStrategy::Pooling(pool)
}
