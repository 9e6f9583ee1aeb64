module github.com/slotcron/slotcron

go 1.26.0

require (
	github.com/robfig/cron/v3 v3.0.1
	go.uber.org/goleak v1.3.0
	go.yaml.in/yaml/v3 v3.0.6
)
