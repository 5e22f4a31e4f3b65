"""Sticky-key consumer selectors for Key_Shared and Key_Failover, one module each.

Every selector has the same interface (selectors.base.StickyKeyConsumerSelector): add_consumer,
remove_consumer, select(slot), slot(hash31), consumer_ranges().
"""
