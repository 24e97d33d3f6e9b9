## The events of one step: the indices of the non-zero values of $src[$n], ascending, into $ev ($count of them),
## gathered once so that the loops after them visit the active inputs only.
int32_t $count = 0;
POND_ROLLED for (int32_t i = 0; i < $n; ++i)
    if ($src[i] != 0) $ev[$count++] = ($ev_t)i;
