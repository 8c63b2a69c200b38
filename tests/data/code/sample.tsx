// A fixture for TSX.
import React from "react";

interface ButtonProps {
  label: string;
}

export function Button({ label }: ButtonProps) {
  return <button className="btn">{label}</button>;
}

export const Card = (props: { title: string }) => {
  return <div>{props.title}</div>;
};

export class Panel extends React.Component<ButtonProps> {
  render() {
    return <section>{this.props.label}</section>;
  }
}
