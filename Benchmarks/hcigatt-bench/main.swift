import CAllocCounter
print(alloc_counter_total())
