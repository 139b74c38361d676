package data

import (
	"github.com/google-pytorch/torchtpu-scanner/internal/readiness"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

// FitShare is the summary's share of sized models that fit one device.
type FitShare struct {
	Generation string   `json:"generation"`
	Models     int      `json:"models"` // that fit one device
	Share      *float64 `json:"share"`  // of the models whose device count is known; null when none
}

// FitSummary is the summary's readiness headline.
type FitSummary struct {
	Known int        `json:"known"` // models whose min_devices is known
	One   []FitShare `json:"one_device"`
}

func NewFitSummary(f store.Fit) FitSummary {
	out := FitSummary{Known: f.Known, One: []FitShare{}}
	for _, g := range readiness.Generations {
		s := FitShare{Generation: g.Name, Models: f.One[g.Name]}
		if f.Known > 0 {
			share := float64(s.Models) / float64(f.Known)
			s.Share = &share
		}
		out.One = append(out.One, s)
	}
	return out
}
