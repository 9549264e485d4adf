
Œ
sku-0"
a0"
b0"ğ
debug.traceàstage=rank item=0 took_us=0 stage=rank item=0 took_us=1 stage=rank item=0 took_us=2 stage=rank item=0 took_us=3 stage=rank item=0 took_us=4 stage=rank item=0 took_us=5 stage=rank item=0 took_us=6 stage=rank item=0 took_us=7 
†
sku-1"
c0.5"ğ
debug.traceàstage=rank item=1 took_us=0 stage=rank item=1 took_us=1 stage=rank item=1 took_us=2 stage=rank item=1 took_us=3 stage=rank item=1 took_us=4 stage=rank item=1 took_us=5 stage=rank item=1 took_us=6 stage=rank item=1 took_us=7 
„
sku-2"
a2"ğ
debug.traceàstage=rank item=2 took_us=0 stage=rank item=2 took_us=1 stage=rank item=2 took_us=2 stage=rank item=2 took_us=3 stage=rank item=2 took_us=4 stage=rank item=2 took_us=5 stage=rank item=2 took_us=6 stage=rank item=2 took_us=7 

sku-3"
b-3"
c1.5"ğ
debug.traceàstage=rank item=3 took_us=0 stage=rank item=3 took_us=1 stage=rank item=3 took_us=2 stage=rank item=3 took_us=3 stage=rank item=3 took_us=4 stage=rank item=3 took_us=5 stage=rank item=3 took_us=6 stage=rank item=3 took_us=7 
„
sku-4"
a4"ğ
debug.traceàstage=rank item=4 took_us=0 stage=rank item=4 took_us=1 stage=rank item=4 took_us=2 stage=rank item=4 took_us=3 stage=rank item=4 took_us=4 stage=rank item=4 took_us=5 stage=rank item=4 took_us=6 stage=rank item=4 took_us=7 
a
b
c
debug.trace