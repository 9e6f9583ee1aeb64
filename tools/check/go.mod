module github.com/slotcron/slotcron/tools/check

go 1.26.0
